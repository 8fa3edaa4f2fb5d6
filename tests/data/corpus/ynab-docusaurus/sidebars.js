module.exports = {
  someSidebar: [
    {
      type: 'doc',
      id: 'introduction',
    },
    {
      type: 'category',
      label: 'Getting started',
      items: ['installation', 'configuration'],
    },
    {
      type: 'doc',
      id: 'query-editor',
    },
    {
      type: 'doc',
      id: 'variables',
    },
  ],
};
